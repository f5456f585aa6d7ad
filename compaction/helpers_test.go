package compaction

import (
	"github.com/sessionrt/sessionrt/messages"
)

// Builders of projected history, as persistence.Journal.ModelHistory returns it.

func userMsg(seq int64, text string, atts ...messages.Attachment) messages.Message {
	return messages.Message{ID: "u", Seq: seq, Role: messages.RoleUser, Prompt: &messages.Prompt{Text: text, Attachments: atts}, Delivery: messages.Steer}
}

func systemMsg(seq int64, text string) messages.Message {
	return messages.Message{ID: "s", Seq: seq, Role: messages.RoleSystem, Text: text}
}

func compactionMsg(seq int64, summary, recent string) messages.Message {
	return messages.Message{ID: "c", Seq: seq, Role: messages.RoleCompaction, Text: summary, RecentContext: recent}
}

var testModel = messages.ModelRef{Provider: "scripted", ID: "demo"}

func assistantMsg(seq int64, text string, tools ...*messages.ToolPart) messages.Message {
	m := messages.Message{ID: "a", Seq: seq, Role: messages.RoleAssistant, Model: testModel, Finished: true, FinishReason: "stop"}
	if text != "" {
		m.Parts = append(m.Parts, messages.Part{Kind: messages.PartText, Seq: seq, Text: text})
	}
	for _, t := range tools {
		m.Parts = append(m.Parts, messages.Part{Kind: messages.PartTool, Seq: seq, Tool: t})
		m.FinishReason = "tool_calls"
	}
	return m
}

func toolDone(id, name, input, output string) *messages.ToolPart {
	return &messages.ToolPart{CallID: id, Tool: name, Input: []byte(input), State: messages.ToolStateCompleted, Output: output}
}
