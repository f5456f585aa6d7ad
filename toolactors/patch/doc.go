// Package patch parses the `*** Begin Patch` format and applies update hunks to file
// content in memory.
//
//	*** Begin Patch
//	*** Add File: path        (every following line starts with +)
//	*** Delete File: path
//	*** Update File: path
//	*** Move to: new/path     (parsed so it can be refused by name)
//	@@ optional anchor line
//	 context line
//	-removed line
//	+added line
//	*** End of File           (optional: the hunk ends at end of file)
//	*** End Patch
//
// Pure: no files. Parse reports the first problem with its 1-based line number; Apply
// reports which hunk of which file did not match. The apply_patch tool does the I/O.
package patch
