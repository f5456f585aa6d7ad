// Package tools holds the built-in tools of a Location: read, bash, apply_patch, glob
// and grep, and the Tool interface the registry runs.
//
// A tool receives an already validated input (see package schema) and a Call carrying
// the Location directory and an Authorize function; it checks every resource it acts on
// through Authorize before acting, and returns a Result: model-visible text (which the
// registry bounds), an optional structured value and an optional managed output path of
// its own. A tool never bounds its final output and never touches actors or the
// journal. Filesystem tools resolve paths with Resolve, which refuses absolute paths,
// `..` escapes and symlink escapes; glob and grep walk with walkFiles, which puts
// every file they visit through the same authority (contain), so a symlink leading
// outside the Location is skipped, never read.
package tools
