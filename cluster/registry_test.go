package cluster

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/asynkron/protoactor-go/remote"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/cluster/wirepb"
	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// overTheWire does what two members do: the RootSerializable hook, protobuf
// marshalling of the envelope, unmarshalling, the RootSerialized hook, and
// the registry's decode.
func overTheWire(t *testing.T, reg *Registry, msg any) any {
	t.Helper()
	enc, err := reg.Encode(msg)
	if err != nil {
		t.Fatalf("encode %T: %v", msg, err)
	}
	var hook remote.RootSerializable = enc
	ser, err := hook.Serialize()
	if err != nil {
		t.Fatalf("serialize %T: %v", msg, err)
	}
	pm, ok := ser.(proto.Message)
	if !ok {
		t.Fatalf("wire form of %T is %T, not a proto message", msg, ser)
	}
	if name := proto.MessageName(pm); name != "sessionrt.cluster.v1.MsgpackEnvelope" {
		t.Fatalf("wire type name %q", name)
	}
	b, err := proto.Marshal(pm)
	if err != nil {
		t.Fatalf("proto marshal: %v", err)
	}
	var got wirepb.MsgpackEnvelope
	if err := proto.Unmarshal(b, &got); err != nil {
		t.Fatalf("proto unmarshal: %v", err)
	}
	back, err := got.Deserialize()
	if err != nil {
		t.Fatalf("deserialize: %v", err)
	}
	out, err := reg.Decode(back.(*wirepb.Encoded))
	if err != nil {
		t.Fatalf("decode %T: %v", msg, err)
	}
	return out
}

func TestSessionCommandsAndRepliesRoundTripThroughEnvelope(t *testing.T) {
	reg := SessionRegistry()
	model := messages.ModelRef{Provider: "openai", ID: "gpt-x"}
	cases := []any{
		&actors.Create{Location: "/srv/proj", Agent: "build", Model: model},
		&actors.Create{Location: "/srv/proj", Agent: "build", Model: model, Title: "t (fork #1)", Copied: []messages.HistoryCopied{{From: "ses_0", MessageID: "msg_9",
			Messages: []messages.CopiedMessage{{ID: "msg_1", Role: messages.RoleUser, Body: messages.Message{Prompt: &messages.Prompt{Text: "hi"}, Delivery: messages.Steer}},
				{ID: "msg_2", Role: messages.RoleAssistant, Body: messages.Message{Agent: "build", Model: model, Finished: true, Parts: []messages.Part{{Kind: messages.PartText, Text: "hello"}}}}}}}},
		&actors.Prompt{MessageID: "msg_1", Prompt: messages.Prompt{Text: "hello ✓", Attachments: []messages.Attachment{
			{Kind: "file", Name: "a.go", MediaType: "text/x-go", URI: "file:///a.go", Data: []byte{0, 1, 2, 255}},
		}}, Delivery: messages.Steer, Resume: true},
		&actors.Run{},
		&actors.Wake{},
		&actors.Interrupt{},
		&actors.Move{To: "/srv/other"},
		&actors.SwitchAgent{Agent: "plan"},
		&actors.SwitchModel{Model: model},
		&actors.ReplyPermission{RequestID: "per_1", Reply: messages.ReplyAlways, Feedback: "ok"},
		&actors.WaitIdle{},
		&actors.Info{Session: persistence.Session{ID: "ses_1", Location: "/srv/proj", Agent: "build", Model: model,
			Status: persistence.StatusIdle, CreatedSeq: 1, HistorySeq: 7, LastSeq: 42}, Created: true},
		&actors.Receipt{SessionID: "ses_1", MessageID: "msg_1", Delivery: messages.Queue, AdmittedSeq: 3, LastSeq: 9, Duplicate: true},
		&actors.Outcome{Err: "turn limit", Kind: "turn_limit", LastSeq: 12},
		&actors.Done{LastSeq: 5},
		&actors.CommandError{Code: actors.CodeFenced, Msg: "session ownership moved"},
		&actors.Revert{Op: actors.RevertStage, MessageID: "msg_1"},
		&actors.RevertInfo{Session: persistence.Session{ID: "ses_1", Location: "/srv/proj", Agent: "build", Model: model, Status: persistence.StatusIdle},
			Open:  &messages.Revert{MessageID: "msg_1", BoundarySeq: 4, Snapshot: "ab", Current: "cd", Files: []string{"a.txt"}, Committed: true, StagedSeq: 9},
			Files: []filesnap.FileDiff{{Path: "a.txt", Status: filesnap.Modified, Additions: 1, Deletions: 2, Patch: "@@"}}},
		&RemoteSnapshot{Op: snapDiff, Dir: "/srv/proj", From: "ab", To: "cd", Paths: []string{"a.txt"}},
		&RemoteSnapshotReply{ID: "ab", Has: true, Paths: []string{"a.txt"}, Err: "gone", Kind: "not_found",
			Diffs: []filesnap.FileDiff{{Path: "a.txt", Status: filesnap.Deleted, Patch: "@@"}}},
	}
	for _, msg := range cases {
		got := overTheWire(t, reg, msg)
		if !reflect.DeepEqual(got, msg) {
			t.Errorf("%T: got %#v, want %#v", msg, got, msg)
		}
	}
}

func TestDecodedCommandErrorStillMatchesSentinel(t *testing.T) {
	got := overTheWire(t, SessionRegistry(), &actors.CommandError{Code: actors.CodeFenced, Msg: "moved"})
	if err, ok := got.(error); !ok || !errors.Is(err, actors.ErrFenced) {
		t.Fatalf("decoded %#v does not match actors.ErrFenced", got)
	}
}

func TestUnknownTypesAreRefusedByName(t *testing.T) {
	reg := SessionRegistry()
	type stranger struct{ X int }
	if _, err := reg.Encode(&stranger{}); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("encode unregistered: err %v, want ErrUnknownType", err)
	}
	_, err := reg.Decode(&wirepb.Encoded{TypeName: "session.Nope", Data: []byte{0x80}})
	if !errors.Is(err, ErrUnknownType) {
		t.Fatalf("decode unknown name: err %v, want ErrUnknownType", err)
	}
}

func TestCorruptPayloadGivesErrorNamingType(t *testing.T) {
	_, err := SessionRegistry().Decode(&wirepb.Encoded{TypeName: "session.Prompt", Data: []byte{0xc1}})
	if err == nil {
		t.Fatal("corrupt payload decoded without error")
	}
	if want := "session.Prompt"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %q", err, want)
	}
}

func TestRegisterRefusesNonPointersAndNameClashes(t *testing.T) {
	reg := NewRegistry()
	if err := reg.Register("x", actors.Run{}); err == nil {
		t.Error("registered a non-pointer")
	}
	if err := reg.Register("", &actors.Run{}); err == nil {
		t.Error("registered an empty name")
	}
	if err := reg.Register("x", &actors.Run{}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register("x", &actors.Wake{}); err == nil {
		t.Error("one name registered for two types")
	}
	if err := reg.Register("y", &actors.Run{}); err == nil {
		t.Error("one type registered under two names")
	}
}
