// Package canon canonicalizes directory paths for the built-in sources cheaply: every
// safe provider-turn boundary canonicalizes the Location's directory and project root,
// and filepath.EvalSymlinks costs one lstat per path component (measured 150 µs for a
// 24-component path here; the Linux /proc route costs 12 µs). It must not cache: ProjectAt shares an answer
// only among the sources of one observation (WithBoundary), never across boundaries.
package canon
