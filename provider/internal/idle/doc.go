// Package idle guards a response body against a connection that stays open
// but goes silent: if no byte arrives for the timeout, the body is closed so
// the blocked read returns and the adapter reports a retryable error instead
// of hanging the session until someone interrupts it.
package idle
