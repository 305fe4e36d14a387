package filters

import "errors"

// ErrClientGone is the Done cause when the request ended before its
// response completed: the client disconnected, or Envoy reset the request.
var ErrClientGone = errors.New("the request ended before its response completed")
