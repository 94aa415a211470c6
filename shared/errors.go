package shared

import (
	"errors"
	"fmt"
)

// Error codes: the one vocabulary of failures, the same in a REST answer ({"error",
// "code"}), a WebSocket error payload and the Go client. server/api maps each to one
// HTTP status.
const (
	CodeInvalid         = "invalid"           // the request is malformed or asks for something impossible
	CodeTooLarge        = "too_large"         // the request body is over the server's limit
	CodeUnauthorized    = "unauthorized"      // the token is missing or wrong
	CodeForbidden       = "forbidden"         // refused whoever asks (cross-origin, foreign host)
	CodeNotFound        = "not_found"         // no such task, session, message or route
	CodeUnknownAction   = "unknown_action"    // a WebSocket action the server does not know
	CodeConflict        = "conflict"          // the resource's state forbids it (a closed session)
	CodeTooManyRequests = "too_many_requests" // wrong tokens came too fast from one address
	CodeTimeout         = "timeout"           // the agent did not answer in time
	CodeDraining        = "draining"          // the server is stopping: send it again later, here or to another server
	// The server has no room to store it: its disk or database is full, or its storage
	// limit (conch serve --max-storage) is reached.
	CodeInsufficientStorage = "insufficient_storage"
	CodeInternal            = "internal" // the server failed; the details are in its log
)

// internalMessage is all a client learns of an internal failure (docs/API.md, "Errors").
const internalMessage = "request failed"

// Error is a failure a client may see: a code and a message for people, with no
// internal context. It is also the payload of a WebSocket error envelope. Wrapping it
// (fmt.Errorf("...: %w", err)) adds context for the log without changing what the
// client sees.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Conflict is an *Error of CodeConflict about files (landing a task's branch): a REST
// answer lists them as "paths".
type Conflict struct {
	Err   *Error
	Paths []string
}

func (e *Conflict) Error() string { return e.Err.Message }
func (e *Conflict) Unwrap() error { return e.Err }

// ConflictPaths returns the files of the first *Conflict in err's chain, nil when none.
func ConflictPaths(err error) []string {
	var c *Conflict
	if errors.As(err, &c) {
		return c.Paths
	}
	return nil
}

// Errorf returns an *Error of the given code whose message is formatted as by fmt.Sprintf.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, CodeInternal when
// there is none, and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e) && e.Code != "":
		return e.Code
	default:
		return CodeInternal
	}
}

// ErrorMessage returns what a client may be told of err: the message of the first
// *Error in its chain, or "request failed" for an internal failure, whose details
// belong in the log only; "" for nil.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Code != "" && e.Code != CodeInternal {
		return e.Message
	}
	return internalMessage
}
