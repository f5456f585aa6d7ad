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
			e.Usage, err = decodeUsage(sc)
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
	}
	return string(b), nil
}

func decodeMessage(sc *jsonscan.Scanner, e *event) error {
	if sc.Null() {
		return nil
	}
	m := &struct {
		ID    string     `json:"id"`
		Model string     `json:"model"`
		Usage *wireUsage `json:"usage"`
	}{}
	e.Message = m
	return sc.Object(func(key []byte) (err error) {
		switch string(key) {
		case "id":
			m.ID, err = sc.String()
		case "model":
			m.Model, err = sc.String()
		case "usage":
			m.Usage, err = decodeUsage(sc)
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
	cb := &struct {
		Type     string `json:"type"`
		ID       string `json:"id"`
		Name     string `json:"name"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
		Data     string `json:"data"`
	}{}
	e.ContentBlock = cb
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
		case "data":
			cb.Data, err = sc.String()
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
	d := &struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		Thinking    string  `json:"thinking"`
		Signature   string  `json:"signature"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	}{}
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
				var s string
				s, err = sc.String()
				d.StopReason = &s
			}
		default:
			err = sc.Skip()
		}
		return err
	})
}

func decodeUsage(sc *jsonscan.Scanner) (*wireUsage, error) {
	if sc.Null() {
		return nil, nil
	}
	u := &wireUsage{}
	intp := func(dst **int) error {
		if sc.Null() {
			return nil
		}
		v, err := sc.Int()
		if err != nil {
			return err
		}
		*dst = &v
		return nil
	}
	err := sc.Object(func(key []byte) error {
		switch string(key) {
		case "input_tokens":
			return intp(&u.InputTokens)
		case "output_tokens":
			return intp(&u.OutputTokens)
		case "cache_creation_input_tokens":
			return intp(&u.CacheCreationInputTokens)
		case "cache_read_input_tokens":
			return intp(&u.CacheReadInputTokens)
		}
		return sc.Skip()
	})
	return u, err
}
