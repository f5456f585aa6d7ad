// Package filesnap measures the cost of a file snapshot per provider turn on
// a generated project of 10,000 files (100 directories of 100 files, 1 KiB
// each, a .gitignore and an ignored build directory), against OpenCode's way
// (the git binary with a shadow GIT_DIR: `git add .` then `git write-tree`)
// measured in the same run on the same tree.
//
//	go test -run '^$' -bench . -benchtime 20x ./bench/filesnap/
package filesnap
