// Package cluster runs sessionrt members on protoactor-go's cluster: membership
// (providers automanaged, consul, etcd), disthash identity lookup, grain kinds
// (the Session grain, identity = session ID), and the msgpack wire.
//
// The wire: protoactor's remote layer sends protobuf only, so every message
// crossing members is msgpack inside one generated envelope
// (wirepb.MsgpackEnvelope{type_name, data}) plugged into protoactor's
// RootSerializable/RootSerialized hook. A Registry maps stable wire names to
// Go types; grains get middleware that decodes what arrives and encodes what
// they send to another member; Member.Request encodes the command and decodes
// the reply.
//
// Start here: Start(system, Config) returns a *Member; Member.Request calls a
// grain with every protoactor call option set (its defaults are one shared,
// mutated global). Members and Where describe the topology.
//
// It must not hold session state or decide anything about a session: the
// Session actor (package actors) owns that, and fences duplicate
// activations through journal ownership epochs, because disthash can place
// one identity on two members during a topology change.
package cluster
