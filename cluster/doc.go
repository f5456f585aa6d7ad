// Package cluster runs sessionrt members on protoactor-go's cluster: membership
// (providers automanaged, consul, etcd), disthash identity lookup, grain kinds
// (the Session grain, identity = session ID), and the msgpack wire.
//
// The wire: protoactor's remote layer sends protobuf only, so every message
// crossing members is msgpack inside one generated envelope
// (wirepb.MsgpackEnvelope{type_name, data}; `go generate ./cluster`
// regenerates it) plugged into protoactor's RootSerializable/RootSerialized
// hook. A Registry maps stable wire names to Go types; grains get middleware
// that decodes what arrives and encodes what they send to another member;
// Member.Request encodes the command and decodes the reply.
//
// Start here:
//
//	grain, _ := cluster.SessionGrain(cluster.SessionGrainConfig{Sessions: sessions})
//	m, err := cluster.Start(system, cluster.Config{
//		AutoManagePort: 6330, Members: []string{"10.0.0.1:6330", "10.0.0.2:6330"},
//		Kinds: []cluster.Kind{grain},
//	})
//	res, err := m.Request(ctx, sessionID, cluster.SessionKind, &actors.Prompt{...}, cluster.CallOptions{})
//
// Request passes every protoactor call option (its defaults are one shared,
// mutated global) and sends again at once when the grain's host leaves the
// topology, so failover costs the provider's detection time (automanaged:
// up to RefreshTTL), not the caller's timeout. Members and Where describe
// the topology; a Config without Kinds joins as a client.
//
// It must not hold session state or decide anything about a session: the
// Session actor (package actors) owns that, and fences duplicate
// activations through journal ownership epochs, because disthash can place
// one identity on two members during a topology change, and Request's
// retries can deliver a command twice (commands carry IDs).
//
// protoactor's cluster races under -race: multi-member tests run members
// as subprocesses built without it (internal/echomember,
// internal/sessionmember), and are skipped under -short.
package cluster
