package server

import "github.com/switchyard/switchyard/filters"

// ExchangeOf is the exchange in flight under request id, nil when none:
// what a test may inspect between two of Envoy's messages.
func (s *Server) ExchangeOf(id string) *filters.Exchange {
	if v, ok := s.exchanges.Load(id); ok {
		return v.(*live).x
	}
	return nil
}
