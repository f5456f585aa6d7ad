// Package bound decides the Model Tool Output: the bounded, model-visible projection of
// one tool settlement's text.
//
// One settlement gets one aggregate limit: MaxLines lines or MaxBytes UTF-8 bytes,
// whichever is reached first. Text within the limit is returned unchanged. Oversized
// text keeps its beginning and its end with a marker in between that names the Managed
// Tool Output File holding the complete text, or says explicitly that the complete text
// was lost when no file could be written. When the tool itself dropped part of its output
// before producing the text (bash's in-memory cap), the marker says so and never calls
// the file complete.
//
// The package is pure: no files, no clocks, no actors. The caller checks Exceeds, writes
// the complete text somewhere (see package managed), and then calls Preview (or
// PreviewSaved, naming the bytes dropped before) with the path it got (or "" when the
// write failed).
package bound
