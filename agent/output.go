package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/internal/jsonschema"
	"github.com/agentpool/agentpool/model"
)

// Output asks an agent for a structured final answer: a JSON value that
// satisfies Schema (AgentPool's output_type). The model is asked for it in
// its provider's structured-output mode (model.Request.Output); an answer
// that does not satisfy the schema goes back to the model with the
// problem, up to Retries times, and then fails the run.
type Output struct {
	Name        string // names the schema for the provider
	Description string
	Schema      json.RawMessage
	Retries     int
}

// EventStructuredOutput is the custom event that carries a structured
// answer once it satisfied the schema: {agent, name, output}.
const EventStructuredOutput = "structured_output"

// ErrOutput ends a run whose final answer never satisfied its Output.
var ErrOutput = errors.New("structured output")

// outputCheck is an agent's compiled Output.
type outputCheck struct {
	spec   Output
	schema *jsonschema.Schema
	req    *model.OutputSchema
}

func newOutputCheck(o *Output) (*outputCheck, error) {
	if o == nil {
		return nil, nil
	}
	s, err := jsonschema.Parse(o.Schema)
	if err != nil {
		return nil, err
	}
	name := o.Name
	if name == "" {
		name = "final_result"
	}
	return &outputCheck{spec: *o, schema: s, req: &model.OutputSchema{Name: name, Description: o.Description, Schema: o.Schema}}, nil
}

// parse returns the JSON value of a final answer and its JSON text: the
// answer itself, or the body of a ```json fence around it (models without a
// structured-output mode add one), checked against the schema.
func (c *outputCheck) parse(text string) (any, string, error) {
	raw := strings.TrimSpace(text)
	if body, ok := strings.CutPrefix(raw, "```"); ok {
		body = strings.TrimPrefix(body, "json")
		if end := strings.LastIndex(body, "```"); end >= 0 {
			raw = strings.TrimSpace(body[:end])
		}
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, "", fmt.Errorf("the answer is not JSON: %v", err)
	}
	if err := c.schema.Validate(v); err != nil {
		return nil, "", err
	}
	return v, raw, nil
}

// retryMessage tells the model what was wrong with its answer.
func (c *outputCheck) retryMessage(err error) model.Message {
	text := fmt.Sprintf("Your answer does not match the required output %q: %v. Answer again with only a JSON value that satisfies this JSON schema:\n%s", c.req.Name, err, c.spec.Schema)
	return model.Message{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: text}}, Synthetic: true}
}
