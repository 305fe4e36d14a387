package providersim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// controlHandler serves the control API:
//
//	POST   /control/{provider}/fault   set the fault (JSON Fault)
//	DELETE /control/{provider}/fault   clear it
//	GET    /control/{provider}/stats   read Stats
//	POST   /control/reset              clear every fault and statistic
func (s *Sim) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /control/{provider}/fault", func(w http.ResponseWriter, r *http.Request) {
		var f Fault
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			controlError(w, http.StatusBadRequest, fmt.Errorf("invalid fault JSON: %w", err))
			return
		}
		if err := s.SetFault(r.PathValue("provider"), f); err != nil {
			controlError(w, controlStatus(err), err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /control/{provider}/fault", func(w http.ResponseWriter, r *http.Request) {
		if err := s.ClearFault(r.PathValue("provider")); err != nil {
			controlError(w, controlStatus(err), err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /control/{provider}/stats", func(w http.ResponseWriter, r *http.Request) {
		st, err := s.Stats(r.PathValue("provider"))
		if err != nil {
			controlError(w, controlStatus(err), err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(mustJSON(st))
	})
	mux.HandleFunc("POST /control/reset", func(w http.ResponseWriter, _ *http.Request) {
		if err := s.Reset(); err != nil {
			controlError(w, http.StatusInternalServerError, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func controlStatus(err error) int {
	switch {
	case errors.Is(err, ErrUnknownProvider):
		return http.StatusNotFound
	case errors.Is(err, errInvalidFault):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func controlError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(mustJSON(map[string]string{"error": err.Error()}))
}
