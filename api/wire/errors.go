package wire

// Error is every error body the API answers with: OpenCode's `_tag`ged
// error objects (InvalidRequestError, UnauthorizedError,
// SessionNotFoundError, ConflictError, …) in one decodable shape.
type Error struct {
	Tag       string `json:"_tag"`
	Message   string `json:"message"`
	Kind      string `json:"kind,omitempty"`  // InvalidRequestError: what is wrong
	Field     string `json:"field,omitempty"` // InvalidRequestError: which field
	SessionID string `json:"sessionID,omitempty"`
	MessageID string `json:"messageID,omitempty"`
	RequestID string `json:"requestID,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Service   string `json:"service,omitempty"`
}

// Error tags.
const (
	TagInvalidRequest     = "InvalidRequestError"
	TagUnauthorized       = "UnauthorizedError"
	TagSessionNotFound    = "SessionNotFoundError"
	TagMessageNotFound    = "MessageNotFoundError"
	TagPermissionNotFound = "PermissionNotFoundError"
	TagQuestionNotFound   = "QuestionNotFoundError"
	TagNotFound           = "NotFoundError"
	TagConflict           = "ConflictError"
	TagBacklog            = "BacklogError"
	TagInvalidCursor      = "InvalidCursorError"
	TagServiceUnavailable = "ServiceUnavailableError"
	TagNotImplemented     = "NotImplementedError"
	TagTooLarge           = "RequestTooLargeError"
	TagUnknown            = "UnknownError"
)
