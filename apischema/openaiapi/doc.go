// Package openaiapi holds the client-facing wire types of the OpenAI API that
// Switchyard speaks: chat completion requests and responses (whole and
// streamed), embeddings, the model list, and the error envelope. Parsing is
// lenient about unknown fields (clients and SDKs add them constantly) and
// strict about the types of the fields the gateway relies on.
package openaiapi
