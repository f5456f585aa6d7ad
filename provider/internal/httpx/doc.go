// Package httpx holds what the HTTP provider adapters share about HTTP itself:
// the default client, whose connection pool is sized for many concurrent
// sessions talking to one API host, and ending a finished response body so
// that its connection goes back to that pool instead of being closed.
package httpx
