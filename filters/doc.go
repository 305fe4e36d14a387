// Package filters is Switchyard's filter chain: the Spring Cloud Gateway
// model applied to Envoy's external processing.
//
// A [Filter] is a value built once per route when a policy loads. It
// implements only the hooks it needs ([RequestHeadersHook],
// [RequestBodyHook], [AttemptHook], [ResponseHeadersHook],
// [ResponseChunkHook], [DoneHook]). Every request gets an [Exchange] that
// carries typed state from hook to hook. The [Chain] runs request hooks in
// ascending filter order and response hooks in descending order, so the
// first filter in is the last one out. Each filter declares itself once,
// in a package of its own (filters/<name>/<name>spec, listed by
// filters/specs): its order, never the policy's to change, what it needs
// and its arguments.
//
// A hook refuses a request by returning an [*openai.Error] (see [Reject]);
// the chain stops and the server answers with the OpenAI error envelope.
// Filters hand each other data only through the Exchange's shared fields
// (Caller, Pressure, Plan, Routing, Sent, Usage), and each declares, per
// phase, which it provides and which it needs (its declaration); [Build] checks
// that every need is met by an earlier step of the chain, so an order or a
// route that breaks the flow fails at load.
//
// Done hooks run exactly once per exchange, for every filter, whatever
// happened, so quota can give back a reservation and usage can record a
// refused request.
//
// Filters never see protobufs: extproc/server turns an Exchange's pending
// mutations into ext_proc messages.
package filters
