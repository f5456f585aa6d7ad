package compaction

import (
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// Builders of projected history, as persistence.Journal.ModelHistory returns it.

func userMsg(seq int64, text string, atts ...messages.Attachment) persistence.Message {
	return persistence.Message{ID: "u", Seq: seq, Role: persistence.RoleUser, Prompt: &messages.Prompt{Text: text, Attachments: atts}, Delivery: messages.Steer}
}

func systemMsg(seq int64, text string) persistence.Message {
	return persistence.Message{ID: "s", Seq: seq, Role: persistence.RoleSystem, Text: text}
}

func compactionMsg(seq int64, summary, recent string) persistence.Message {
	return persistence.Message{ID: "c", Seq: seq, Role: persistence.RoleCompaction, Text: summary, RecentContext: recent}
}

var testModel = messages.ModelRef{Provider: "scripted", ID: "demo"}

func assistantMsg(seq int64, text string, tools ...*persistence.ToolPart) persistence.Message {
	m := persistence.Message{ID: "a", Seq: seq, Role: persistence.RoleAssistant, Model: testModel, Finished: true, FinishReason: "stop"}
	if text != "" {
		m.Parts = append(m.Parts, persistence.Part{Kind: persistence.PartText, Seq: seq, Text: text})
	}
	for _, t := range tools {
		m.Parts = append(m.Parts, persistence.Part{Kind: persistence.PartTool, Seq: seq, Tool: t})
		m.FinishReason = "tool_calls"
	}
	return m
}

func toolDone(id, name, input, output string) *persistence.ToolPart {
	return &persistence.ToolPart{CallID: id, Tool: name, Input: []byte(input), State: persistence.ToolCompleted, Output: output}
}
