// Package wirepb holds the one protobuf message sessionrt sends between
// cluster members (MsgpackEnvelope, generated from envelope.proto; run
// `go generate ./cluster` to regenerate) and its two in-process faces for
// protoactor's RootSerializable/RootSerialized hook. It knows nothing of
// msgpack or of sessionrt's types: decoding is the cluster package's job.
package wirepb

import "github.com/asynkron/protoactor-go/remote"

// Encoded is a message already encoded as msgpack under its registered type
// name: what a member hands to protoactor and what arrives on the other side.
// It is decoded by the receiver that holds the type registry (the grain's
// receive middleware, the request helper), never by the remote layer, so an
// unknown type name reaches code that can answer with an error instead of
// breaking the member-to-member stream.
type Encoded struct {
	TypeName string
	Data     []byte
}

// Serialize gives the remote layer the protobuf envelope to send.
func (e *Encoded) Serialize() (remote.RootSerialized, error) {
	return &MsgpackEnvelope{TypeName: e.TypeName, Data: e.Data}, nil
}

// Deserialize turns a received envelope back into an Encoded message. It
// never fails: decoding happens later, where errors can be answered.
func (x *MsgpackEnvelope) Deserialize() (remote.RootSerializable, error) {
	return &Encoded{TypeName: x.GetTypeName(), Data: x.GetData()}, nil
}

var (
	_ remote.RootSerializable = (*Encoded)(nil)
	_ remote.RootSerialized   = (*MsgpackEnvelope)(nil)
)
