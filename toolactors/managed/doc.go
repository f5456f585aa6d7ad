// Package managed owns the Managed Tool Output Files: complete tool output that was too
// large for Session history, written as `tool_<unique id>` into one flat directory under
// the data directory, kept for a retention period (default 7 days) and swept
// periodically.
//
// A file is temporary: the bounded Model Tool Output in the journal is the durable
// record, never the file. The sweep removes only expired files whose names start with
// `tool_`; anything else in the directory is left alone. This package decides nothing
// about bounding (see package bound) and knows nothing of actors.
package managed
