package wire

// PTY is a terminal: OpenCode's Pty schema (id, title, command, args, cwd,
// status, pid) plus sessionrt's Location, size, output offset and exit.
type PTY struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Cwd     string   `json:"cwd"`
	// Status is "running" or "exited".
	Status   string      `json:"status"`
	PID      int         `json:"pid"`
	Location LocationRef `json:"location"`
	Size     PTYSize     `json:"size"`
	// Offset is how many bytes of output the terminal has produced: the
	// cursor a reader resumes from.
	Offset int64   `json:"offset"`
	Time   PTYTime `json:"time"`
	// Set once Status is "exited": the exit code (-1 when a signal
	// ended the program), the signal, or why the program did not start.
	ExitCode *int   `json:"exitCode,omitempty"`
	Signal   string `json:"signal,omitempty"`
	Error    string `json:"error,omitempty"`
}

// PTY statuses.
const (
	PTYRunning = "running"
	PTYExited  = "exited"
)

// PTYSize is a terminal size in character cells.
type PTYSize struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`
}

// PTYTime holds millisecond Unix times.
type PTYTime struct {
	Created float64 `json:"created"`
}

// CreatePTYRequest is the body of POST /api/pty (OpenCode's
// pty.create input plus location and size).
type CreatePTYRequest struct {
	// Command defaults to the server's $SHELL, else /bin/sh.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Cwd is absolute or relative to the Location; default the Location.
	Cwd   string            `json:"cwd,omitempty"`
	Title string            `json:"title,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
	// Location defaults to the server's default Location.
	Location *LocationRef `json:"location,omitempty"`
	// Size defaults to 24×80.
	Size *PTYSize `json:"size,omitempty"`
}

// UpdatePTYRequest is the body of PUT /api/pty/{id} (OpenCode's
// pty.update): a new title, a new size, or both.
type UpdatePTYRequest struct {
	Title *string  `json:"title,omitempty"`
	Size  *PTYSize `json:"size,omitempty"`
}

// PTYInputRequest is the body of POST /api/pty/{id}/input: bytes to type,
// as text (Data) or base64 (Base64), not both.
type PTYInputRequest struct {
	Data   string `json:"data,omitempty"`
	Base64 string `json:"base64,omitempty"` // standard encoding, padded
}

// PTY stream event types (SSE event names, and the "type" of the text
// frames of the WebSocket).
const (
	// EventPTYOutput carries PTYOutput (SSE only; the WebSocket sends
	// output as binary frames).
	EventPTYOutput = "pty.output"
	// EventPTYExited carries the final PTY: the stream's last event.
	EventPTYExited = "pty.exited"
	// EventCut (server.cut) carries PTYCut when the reader fell behind.
)

// PTYOutput is a chunk of terminal output: the raw bytes (base64 in JSON)
// at Offset. The SSE id of the event is Offset+len(Data), the cursor to
// resume after it.
type PTYOutput struct {
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"`
}

// PTYCut says a stream was cut because its reader fell behind: output
// from Offset was dropped before it was sent. Reconnect with after=Start
// (or later) to go on.
type PTYCut struct {
	Message string `json:"message"`
	Offset  int64  `json:"offset"`
	Start   int64  `json:"start"`
}

// PTYControl is a text frame of the WebSocket: Type is EventPTYExited
// (PTY set) or EventCut (Cut set).
type PTYControl struct {
	Type string  `json:"type"`
	PTY  *PTY    `json:"pty,omitempty"`
	Cut  *PTYCut `json:"cut,omitempty"`
}
