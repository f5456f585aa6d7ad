package tools

import (
	"context"
	"errors"

	"github.com/sessionrt/sessionrt/toolactors/schema"
)

// Question is the question tool as the provider sees it: the model asks
// the user one or more questions with suggested answers. The Session
// answers it itself (it journals the request and ends the drain until the
// user replies), so Run is never reached through a session; called
// directly, it fails.
type Question struct {
	def definitionOnce
}

// Definition implements Tool.
func (q *Question) Definition() Definition { return q.def.get(q.define) }

func (q *Question) define() Definition {
	option := schema.Object([]string{"label", "description"}, map[string]*schema.Schema{
		"label":       schema.String("Display text (1-5 words)"),
		"description": schema.String("What choosing it means"),
	})
	question := schema.Object([]string{"question", "header", "options"}, map[string]*schema.Schema{
		"question": schema.String("The complete question"),
		"header":   schema.String("A very short label (at most 30 characters)"),
		"options":  {Type: "array", Description: "Suggested answers", Items: option},
		"multiple": schema.Boolean("The user may pick several options"),
	})
	return Definition{
		Name: "question",
		Description: "Ask the user when you need a decision or information only they have (preferences, ambiguous " +
			"requirements, a choice between approaches). Each question offers suggested answers; the user may also answer " +
			"in their own words. Your work pauses until they answer; the answer comes back as this call's result.",
		Action: "question",
		Input: schema.Object([]string{"questions"}, map[string]*schema.Schema{
			"questions": {Type: "array", Description: "The questions to ask", Items: question},
		}),
	}
}

// Run implements Tool.
func (q *Question) Run(context.Context, Call) (Result, error) {
	return Result{}, errors.New("the question tool is answered by the session: it cannot run on its own")
}
