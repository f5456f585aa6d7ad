package cluster

// Regenerates wirepb/envelope.pb.go from wirepb/envelope.proto with buf and
// the protoc-gen-go that go.mod pins.
//go:generate go run github.com/bufbuild/buf/cmd/buf@v1.75.0 generate
