// Package sdktest holds the compatibility test with OpenCode's official SDK
// (@opencode-ai/sdk, its /v2 entry, from npm): a Node script
// (api/testdata/sdk/drive.mjs) drives a real sessionrt runtime behind the
// real API handler. It has no non-test code.
package sdktest
