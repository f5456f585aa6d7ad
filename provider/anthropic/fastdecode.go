package anthropic

import (
	"github.com/sessionrt/sessionrt/provider/internal/jsonscan"
)

// decodeEventFast decodes an event without reflection. It reports false on
// any input it does not handle (then the caller uses encoding/json, which
// also produces the precise error).
func decodeEventFast(sc *jsonscan.Scanner, data []byte, e *event) bool {
	sc.Reset(data)
	*e = event{}
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
		case "type":
			e.Type, err = internType(sc)
		case "index":
			e.Index, err = sc.Int()
		case "message":
			err = decodeMessage(sc, e)
		case "content_block":
			err = decodeContentBlock(sc, e)
		case "delta":
			err = decodeDelta(sc, e)
		case "usage":
			if !sc.Null() {
				e.Usage = &e.store.usage
				err = decodeUsage(sc, e.Usage)
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

// internType reads a type string, returning constants for the known values
// so the hot path does not allocate them.
func internType(sc *jsonscan.Scanner) (string, error) {
	b, err := sc.Bytes()
	if err != nil {
		return "", err
	}
	switch string(b) {
	case "content_block_delta":
		return "content_block_delta", nil
	case "text_delta":
		return "text_delta", nil
	case "thinking_delta":
		return "thinking_delta", nil
	case "input_json_delta":
		return "input_json_delta", nil
	case "signature_delta":
		return "signature_delta", nil
	case "content_block_start":
		return "content_block_start", nil
	case "content_block_stop":
		return "content_block_stop", nil
	case "text":
		return "text", nil
	case "thinking":
		return "thinking", nil
	case "tool_use":
		return "tool_use", nil
	case "ping":
		return "ping", nil
	case "message_delta":
		return "message_delta", nil
	case "end_turn":
		return "end_turn", nil
	case "message_start":
		return "message_start", nil
	case "message_stop":
		return "message_stop", nil
	case "stop_sequence":
		return "stop_sequence", nil
	case "max_tokens":
		return "max_tokens", nil
	}
	return string(b), nil
}

func decodeMessage(sc *jsonscan.Scanner, e *event) error {
	if sc.Null() {
		return nil
	}
	m := &e.store.message
	e.Message = m
	return sc.Object(func(key []byte) (err error) {
		switch string(key) {
		case "id":
			m.ID, err = sc.String()
		case "model":
			m.Model, err = sc.String()
		case "content":
			if !sc.Null() {
				m.Content = []contentBlock{}
				err = sc.Array(func() error {
					m.Content = append(m.Content, contentBlock{})
					return decodeBlock(sc, &m.Content[len(m.Content)-1])
				})
			}
		case "stop_reason":
			if !sc.Null() {
				e.store.stop, err = internType(sc)
				m.StopReason = &e.store.stop
			}
		case "usage":
			if !sc.Null() {
				m.Usage = &e.store.mUsag
				err = decodeUsage(sc, m.Usage)
			}
		default:
			err = sc.Skip()
		}
		return err
	})
}

func decodeContentBlock(sc *jsonscan.Scanner, e *event) error {
	if sc.Null() {
		return nil
	}
	e.ContentBlock = &e.store.block
	return decodeBlock(sc, e.ContentBlock)
}

func decodeBlock(sc *jsonscan.Scanner, cb *contentBlock) error {
	return sc.Object(func(key []byte) (err error) {
		switch string(key) {
		case "type":
			cb.Type, err = internType(sc)
		case "id":
			cb.ID, err = sc.String()
		case "name":
			cb.Name, err = sc.String()
		case "text":
			cb.Text, err = sc.String()
		case "thinking":
			cb.Thinking, err = sc.String()
		case "signature":
			cb.Signature, err = sc.String()
		case "data":
			cb.Data, err = sc.String()
		case "input":
			var raw []byte
			if raw, err = sc.Raw(); err == nil {
				err = cb.Input.UnmarshalJSON(raw)
			}
		default:
			err = sc.Skip()
		}
		return err
	})
}

func decodeDelta(sc *jsonscan.Scanner, e *event) error {
	if sc.Null() {
		return nil
	}
	d := &e.store.delta
	e.Delta = d
	return sc.Object(func(key []byte) (err error) {
		switch string(key) {
		case "type":
			d.Type, err = internType(sc)
		case "text":
			d.Text, err = sc.String()
		case "thinking":
			d.Thinking, err = sc.String()
		case "signature":
			d.Signature, err = sc.String()
		case "partial_json":
			d.PartialJSON, err = sc.String()
		case "stop_reason":
			if !sc.Null() {
				e.store.stop, err = internType(sc)
				d.StopReason = &e.store.stop
			}
		default:
			err = sc.Skip()
		}
		return err
	})
}

// decodeUsage reads a usage object into u.
func decodeUsage(sc *jsonscan.Scanner, u *wireUsage) error {
	opt := func(dst *optInt) (err error) {
		*dst = optInt{}
		if sc.Null() {
			return nil
		}
		dst.V, err = sc.Int()
		dst.Set = err == nil
		return err
	}
	return sc.Object(func(key []byte) error {
		switch string(key) {
		case "input_tokens":
			return opt(&u.InputTokens)
		case "output_tokens":
			return opt(&u.OutputTokens)
		case "cache_creation_input_tokens":
			return opt(&u.CacheCreationInputTokens)
		case "cache_read_input_tokens":
			return opt(&u.CacheReadInputTokens)
		case "output_tokens_details":
			return sc.Object(func(key []byte) error {
				if string(key) == "thinking_tokens" {
					return opt(&u.OutputTokensDetails.ThinkingTokens)
				}
				return sc.Skip()
			})
		}
		return sc.Skip()
	})
}
