package provider

// EstimateTokens is a provider-neutral estimate of the input tokens req
// costs: 4 bytes of text a token (OpenCode's heuristic), plus a flat 1,000
// per attachment that is not text. It is what the Session compares with a
// model's context window before a provider reports real usage; it is not
// a tokenizer.
func EstimateTokens(req *Request) int {
	n := len(req.System)
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	attach := 0
	for i := range req.Messages {
		m := &req.Messages[i]
		n += len(m.Text)
		for _, r := range m.Reasoning {
			n += len(r.Text)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Args)
		}
		if m.ToolResult != nil {
			n += len(m.ToolResult.Output)
		}
		for _, a := range m.Attachments {
			if len(a.MediaType) >= 5 && a.MediaType[:5] == "text/" {
				n += len(a.Data)
			} else {
				attach++
			}
		}
	}
	return (n+3)/4 + attach*1000
}
