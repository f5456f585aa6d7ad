// Package tools benchmarks the tool layer: bounding large output (pure, and with the
// managed file write) and many concurrent bash calls through the registry actor, which
// must leave no process and no descriptor behind.
//
//	go test -run '^$' -bench . -benchtime 20x ./bench/tools/
package tools
