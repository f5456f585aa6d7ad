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
// A node joins with Join (Session grain, its Location kind, Placement of
// Locations held elsewhere, orphan resumption, /metrics), and serves its
// API through NewRouter(m): the actors.Sessions methods, each sent to the
// session's grain wherever it is placed. `sessionrt serve --cluster-member`
// does exactly that (cli/serve_cluster.go).
//
// Request passes every protoactor call option (its defaults are one shared,
// mutated global) and sends again at once when the grain's host leaves the
// topology, so failover costs the provider's detection time (automanaged:
// up to RefreshTTL), not the caller's timeout. Members and Where describe
// the topology; a Config without Kinds joins as a client.
//
// Commands carry IDs (Request assigns Run/Wake/Interrupt/Move IDs and a
// prompt's message ID), and a Session grain answers a repeated ID with the
// first delivery's result. ResumeOrphans re-activates, when a member
// leaves, the sessions it left mid-drain that are now placed here: their
// running tools fail durably (none runs again) and the drain resumes once,
// without waiting for a caller.
//
// Locations are pinned to the member holding their directory: every member
// hosts the kind LocationKindName(name) (LocationKind), and a Placement
// (directory roots -> member names, the same on every member) installed
// with Sessions.SetToolPlacement sends a Session's tool calls for a
// Location held elsewhere through a local proxy to that member's Location
// grain, which runs them in its own tool registry; the settlement comes
// back to the Session. A tool running on a member that dies is settled as
// interrupted. After a move, the next tools run on the new Location's
// member. A remote tool's permission request comes back through the proxy
// to the Session (journaled and published there) and the client's reply
// goes back to the tool. A Location's file snapshots live on its member
// too (JoinConfig.Snapshots, Placement.Snapshots): a Session on another
// member takes, diffs and restores them through the Location grain, so a
// session that failed over reverts to the snapshots its turns took. Not across members: the context registry and the
// catalog (observed on the Session's member: Context Sources are Go values,
// and the tool catalog is the same code everywhere).
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
