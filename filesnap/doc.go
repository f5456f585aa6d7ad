// Package filesnap keeps file snapshots of a Location (a project directory)
// outside the project, so a session can be reverted to how its files were at
// any provider turn.
//
// A Store lives in the server's data directory. It holds content-addressed
// blobs (sha256 of the bytes) and trees (a sorted manifest of path, mode and
// blob; its ID is the sha256 of the manifest), shared by every Location of
// the store, so a tree taken in one directory can be restored into another
// (a moved session reverts on its new Location). Per Location it keeps a
// stat cache (size, mtime, ctime, inode, mode → blob): Take hashes only the
// files whose stat changed, and a Take with nothing changed writes nothing.
//
// What is tracked follows git: .gitignore files (nested, with negation and
// **), .git/info/exclude, and never .git itself; files larger than
// Config.MaxFileSize are not tracked (a revert leaves them alone).
//
//	st, _ := filesnap.Open(filesnap.Config{Dir: filepath.Join(dataDir, "snapshots")})
//	before, _ := st.Take(dir)   // at a turn's start
//	…the agent edits files…
//	after, _ := st.Take(dir)
//	diffs, _ := st.Diff(before, after) // what changed, with unified patches
//	_ = st.Restore(dir, before, filesnap.Paths(diffs)) // put them back
//
// The store is bounded by GC (Run calls it periodically): a tree no Take
// returned within the retention (DefaultRetention, a week, as OpenCode
// prunes) is removed, then every blob no remaining tree and no stat cache
// names. Its callers refuse a revert to a removed tree.
//
// The package imports nothing of sessionrt: it is a storage utility the
// Session actor and the HTTP layer call; it decides nothing about sessions.
package filesnap
