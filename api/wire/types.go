package wire

// Data is OpenCode's response envelope: {"data": …}.
type Data[T any] struct {
	Data T `json:"data"`
}

// ModelRef names a model at a provider (OpenCode's ModelRef).
type ModelRef struct {
	ID         string `json:"id"`
	ProviderID string `json:"providerID"`
	Variant    string `json:"variant,omitempty"`
}

// LocationRef is where a session works: a project directory.
type LocationRef struct {
	Directory   string `json:"directory"`
	WorkspaceID string `json:"workspaceID,omitempty"`
}

// CacheTokens splits cached input tokens.
type CacheTokens struct {
	Read  float64 `json:"read"`
	Write float64 `json:"write"`
}

// Tokens is token accounting.
type Tokens struct {
	Input     float64     `json:"input"`
	Output    float64     `json:"output"`
	Reasoning float64     `json:"reasoning"`
	Cache     CacheTokens `json:"cache"`
}

// SessionTime holds millisecond Unix times.
type SessionTime struct {
	Created float64 `json:"created"`
	Updated float64 `json:"updated"`
}

// Session is OpenCode's SessionV2Info plus sessionrt's status and lastSeq.
type Session struct {
	ID        string      `json:"id"`
	ProjectID string      `json:"projectID"`
	Agent     string      `json:"agent,omitempty"`
	Model     *ModelRef   `json:"model,omitempty"`
	Cost      float64     `json:"cost"`
	Tokens    Tokens      `json:"tokens"`
	Time      SessionTime `json:"time"`
	Title     string      `json:"title"`
	Location  LocationRef `json:"location"`
	// Status is "idle" or "busy" (a drain started and has not ended).
	Status string `json:"status,omitempty"`
	// LastSeq is the session's last durable event seq: the cursor to
	// resume its event stream from.
	LastSeq int64 `json:"lastSeq"`
}

// Cursor is an opaque page position pair.
type Cursor struct {
	Previous string `json:"previous,omitempty"`
	Next     string `json:"next,omitempty"`
}

// SessionsResponse answers GET /api/session.
type SessionsResponse struct {
	Data   []Session `json:"data"`
	Cursor Cursor    `json:"cursor"`
}

// SessionActive is one entry of GET /api/session/active.
type SessionActive struct {
	Type string `json:"type"` // "running"
}

// CreateSessionRequest is the body of POST /api/session.
type CreateSessionRequest struct {
	ID       string       `json:"id,omitempty"`
	Agent    string       `json:"agent,omitempty"`
	Model    *ModelRef    `json:"model,omitempty"`
	Location *LocationRef `json:"location,omitempty"`
}

// PromptSource is where an attachment's reference sits in the prompt text.
type PromptSource struct {
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Text  string  `json:"text"`
}

// FileAttachment is a file referenced by a prompt (mime optional on input).
type FileAttachment struct {
	URI         string        `json:"uri"`
	Mime        string        `json:"mime,omitempty"`
	Name        string        `json:"name,omitempty"`
	Description string        `json:"description,omitempty"`
	Source      *PromptSource `json:"source,omitempty"`
}

// AgentAttachment is an agent referenced by a prompt.
type AgentAttachment struct {
	Name   string        `json:"name"`
	Source *PromptSource `json:"source,omitempty"`
}

// Prompt is what a user sends (OpenCode's PromptInput and Prompt).
type Prompt struct {
	Text   string            `json:"text"`
	Files  []FileAttachment  `json:"files,omitempty"`
	Agents []AgentAttachment `json:"agents,omitempty"`
}

// PromptRequest is the body of POST /api/session/{id}/prompt. Resume false
// admits the prompt and holds it: it runs with the next prompt, run or wake
// of the session, and a restart does not run it on its own (V1's noReply
// is the same hold).
type PromptRequest struct {
	ID       string  `json:"id,omitempty"`
	Prompt   *Prompt `json:"prompt"`
	Delivery string  `json:"delivery,omitempty"` // steer (default) or queue
	Resume   *bool   `json:"resume,omitempty"`   // default true
}

// InputAdmitted is the durable receipt of an admitted prompt.
type InputAdmitted struct {
	AdmittedSeq int64   `json:"admittedSeq"`
	ID          string  `json:"id"`
	SessionID   string  `json:"sessionID"`
	Prompt      Prompt  `json:"prompt"`
	Delivery    string  `json:"delivery"`
	TimeCreated float64 `json:"timeCreated"`
	PromotedSeq int64   `json:"promotedSeq,omitempty"`
	// Duplicate says the same ID and content were admitted before: nothing
	// new was written and AdmittedSeq is the original one.
	Duplicate bool `json:"duplicate,omitempty"`
}

// SwitchAgentRequest is the body of POST /api/session/{id}/agent.
type SwitchAgentRequest struct {
	Agent string `json:"agent"`
}

// SwitchModelRequest is the body of POST /api/session/{id}/model.
type SwitchModelRequest struct {
	Model *ModelRef `json:"model"`
}

// MoveRequest is the body of POST /api/session/{id}/move (sessionrt).
type MoveRequest struct {
	Location *LocationRef `json:"location"`
}

// Outcome answers POST /api/session/{id}/run and /wait (sessionrt): how
// the (last) drain ended.
type Outcome struct {
	// Error is empty when the drain ended normally.
	Error string `json:"error,omitempty"`
	// Kind classifies Error: "", "provider", "turn_limit",
	// "context_blocked", "model", "compaction", "overflow", "config",
	// "tools", "location", "internal", "interrupted", "moved", "fenced",
	// "journal".
	Kind    string `json:"kind,omitempty"`
	LastSeq int64  `json:"lastSeq"`
}

// PermissionSource names the tool call that asked.
type PermissionSource struct {
	Type      string `json:"type"` // "tool"
	MessageID string `json:"messageID"`
	CallID    string `json:"callID"`
}

// PermissionRequest is a pending permission request (PermissionV2Request).
type PermissionRequest struct {
	ID        string            `json:"id"`
	SessionID string            `json:"sessionID"`
	Action    string            `json:"action"`
	Resources []string          `json:"resources"`
	Source    *PermissionSource `json:"source,omitempty"`
}

// PermissionReplyRequest is the body of POST …/permission/{requestID}/reply.
type PermissionReplyRequest struct {
	Reply   string `json:"reply"` // once, always or reject
	Message string `json:"message,omitempty"`
}

// QuestionRequest is OpenCode's QuestionV2Request: a question tool call's
// pending questions.
type QuestionRequest struct {
	ID        string         `json:"id"`
	SessionID string         `json:"sessionID"`
	Questions []QuestionInfo `json:"questions"`
	Tool      *QuestionTool  `json:"tool,omitempty"`
}

// QuestionInfo is one question (OpenCode's QuestionV2Info).
type QuestionInfo struct {
	Question string           `json:"question"`
	Header   string           `json:"header"`
	Options  []QuestionOption `json:"options"`
	Multiple bool             `json:"multiple,omitempty"`
	Custom   bool             `json:"custom,omitempty"`
}

// QuestionOption is one suggested answer.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// QuestionTool names the tool call that asked.
type QuestionTool struct {
	MessageID string `json:"messageID"`
	CallID    string `json:"callID"`
}

// QuestionReplyRequest is the body of POST …/question/{requestID}/reply.
type QuestionReplyRequest struct {
	Answers [][]string `json:"answers"`
}

// Health answers GET /api/health.
type Health struct {
	Healthy bool `json:"healthy"`
}

// RevertStageRequest is the body of POST /api/session/{id}/revert/stage.
// Files is accepted as OpenCode sends it; the files change at commit.
type RevertStageRequest struct {
	MessageID string `json:"messageID"`
	Files     *bool  `json:"files,omitempty"`
}

// RevertState answers a stage: the boundary message, the snapshot the
// files go back to, the combined patch and the files a commit changes
// (current → reverted).
type RevertState struct {
	MessageID string     `json:"messageID"`
	PartID    string     `json:"partID,omitempty"`
	Snapshot  string     `json:"snapshot,omitempty"`
	Diff      string     `json:"diff,omitempty"`
	Files     []FileDiff `json:"files,omitempty"`
}

// FileDiff is one changed file (OpenCode's FileDiff).
type FileDiff struct {
	Path      string `json:"path"`
	Status    string `json:"status"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Patch     string `json:"patch"`
}
