package openai

import (
	"github.com/sessionrt/sessionrt/provider/internal/jsonscan"
)

// decodeChunkFast decodes a chunk without reflection. It reports false on any
// input it does not handle (then the caller uses encoding/json, which also
// produces the precise error). ID and Model are only read when wantMeta, to
// spare two allocations per chunk.
func decodeChunkFast(sc *jsonscan.Scanner, data []byte, c *chunk, wantMeta bool) bool {
	sc.Reset(data)
	*c = chunk{Choices: c.Choices[:0]}
	if sc.Begin('{') != nil {
		return false
	}
	for n := 0; ; n++ {
		more, err := sc.Next('}', n)
		if err != nil {
			return false
		}
		if !more {
			break
		}
		key, err := sc.Key()
		if err != nil {
			return false
		}
		switch string(key) {
		case "id":
			if wantMeta {
				c.ID, err = sc.String()
			} else {
				err = sc.Skip()
			}
		case "model":
			if wantMeta {
				c.Model, err = sc.String()
			} else {
				err = sc.Skip()
			}
		case "choices":
			err = decodeChoices(sc, c)
		case "usage":
			err = decodeUsage(sc, c)
		case "error":
			if !sc.Null() {
				c.Error, err = sc.Raw()
			}
		default:
			err = sc.Skip()
		}
		if err != nil {
			return false
		}
	}
	return sc.End() == nil
}

func decodeChoices(sc *jsonscan.Scanner, c *chunk) error {
	return sc.Array(func() error {
		c.Choices = append(c.Choices, choice{})
		return decodeChoice(sc, &c.Choices[len(c.Choices)-1])
	})
}

func decodeChoice(sc *jsonscan.Scanner, ch *choice) error {
	return sc.Object(func(key []byte) (err error) {
		switch string(key) {
		case "index":
			ch.Index, err = sc.Int()
		case "finish_reason":
			ch.FinishReason, err = finishReason(sc)
		case "delta":
			err = decodeDelta(sc, &ch.Delta)
		default:
			err = sc.Skip()
		}
		return err
	})
}

func decodeDelta(sc *jsonscan.Scanner, d *delta) error {
	return sc.Object(func(key []byte) (err error) {
		switch string(key) {
		case "content":
			err = decodeContent(sc, &d.Content)
		case "reasoning_content":
			d.ReasoningContent, err = sc.String()
		case "reasoning":
			d.Reasoning, err = sc.String()
		case "refusal":
			d.Refusal, err = sc.String()
		case "tool_calls":
			err = decodeToolCalls(sc, d)
		default:
			err = sc.Skip()
		}
		return err
	})
}

// decodeContent reads delta.content, a string or typed parts (see content).
func decodeContent(sc *jsonscan.Scanner, c *content) (err error) {
	if sc.Peek() != '[' {
		c.Text, err = sc.String()
		return err
	}
	return sc.Array(func() error {
		var typ, text, thinking string
		err := sc.Object(func(key []byte) (err error) {
			switch string(key) {
			case "type":
				typ, err = sc.String()
			case "text":
				text, err = sc.String()
			case "thinking":
				thinking, err = textParts(sc)
			default:
				err = sc.Skip()
			}
			return err
		})
		switch typ {
		case "text":
			c.Text += text
		case "thinking":
			c.Thinking += thinking
		}
		return err
	})
}

// textParts reads a string, or an array of {"type":"text","text":…} parts
// joined.
func textParts(sc *jsonscan.Scanner) (string, error) {
	if sc.Peek() != '[' {
		return sc.String()
	}
	var out string
	err := sc.Array(func() error {
		var typ, text string
		err := sc.Object(func(key []byte) (err error) {
			switch string(key) {
			case "type":
				typ, err = sc.String()
			case "text":
				text, err = sc.String()
			default:
				err = sc.Skip()
			}
			return err
		})
		if typ == "text" {
			out += text
		}
		return err
	})
	return out, err
}

func decodeToolCalls(sc *jsonscan.Scanner, d *delta) error {
	return sc.Array(func() error {
		d.ToolCalls = append(d.ToolCalls, toolCallDelta{})
		tc := &d.ToolCalls[len(d.ToolCalls)-1]
		return sc.Object(func(key []byte) (err error) {
			switch string(key) {
			case "index":
				tc.Index, err = sc.Int()
			case "id":
				tc.ID, err = sc.String()
			case "function":
				err = decodeFunction(sc, tc)
			default:
				err = sc.Skip()
			}
			return err
		})
	})
}

func decodeFunction(sc *jsonscan.Scanner, tc *toolCallDelta) error {
	return sc.Object(func(key []byte) (err error) {
		switch string(key) {
		case "name":
			tc.Function.Name, err = sc.String()
		case "arguments":
			tc.Function.Arguments, err = sc.String()
		default:
			err = sc.Skip()
		}
		return err
	})
}

// finishReason reads a finish reason ("" for null), returning constants for
// the usual ones so the last chunk allocates nothing for it.
func finishReason(sc *jsonscan.Scanner) (string, error) {
	if sc.Null() {
		return "", nil
	}
	b, err := sc.Bytes()
	if err != nil {
		return "", err
	}
	switch string(b) {
	case "stop":
		return "stop", nil
	case "tool_calls":
		return "tool_calls", nil
	case "length":
		return "length", nil
	}
	return string(b), nil
}

func decodeUsage(sc *jsonscan.Scanner, c *chunk) error {
	if sc.Null() {
		return nil
	}
	c.usage = wireUsage{}
	u := &c.usage
	c.Usage = u
	return sc.Object(func(key []byte) (err error) {
		switch string(key) {
		case "prompt_tokens":
			u.PromptTokens, err = sc.Int()
		case "completion_tokens":
			u.CompletionTokens, err = sc.Int()
		case "total_tokens":
			u.TotalTokens, err = sc.Int()
		case "prompt_tokens_details":
			err = intField(sc, "cached_tokens", &u.PromptTokensDetails.CachedTokens)
		case "completion_tokens_details":
			err = intField(sc, "reasoning_tokens", &u.CompletionTokensDetails.ReasoningTokens)
		default:
			err = sc.Skip()
		}
		return err
	})
}

// intField reads an object (null reads as empty), storing the integer field
// name into dst.
func intField(sc *jsonscan.Scanner, name string, dst *int) error {
	return sc.Object(func(key []byte) (err error) {
		if string(key) == name {
			*dst, err = sc.Int()
		} else {
			err = sc.Skip()
		}
		return err
	})
}
