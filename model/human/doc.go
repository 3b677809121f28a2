// Package human is the input model: a model.Model whose every turn is a
// person's answer (AgentPool's `model: {type: input}`, llmling-models'
// InputModel). An agent with it is a person in the pool: other agents
// delegate to it, and what the person types is its answer.
//
// The model does not talk to anyone itself. It puts a Question to the
// Asker the program attached (agentpool run's terminal) and streams the
// answer as the turn's text, then finishes with "stop": the person calls
// no tools. The Question holds the agent's system prompt (unless
// ShowSystem is off) and the prompt, the last user message, set in
// PromptTemplate ("{prompt}").
//
// Guarantees:
//
//   - No Asker attached (a server, a worker, a run without a terminal):
//     the turn fails with an error that says a person must answer and
//     where one can (ErrNobodyToAsk); nothing waits.
//   - The Asker is looked up at each turn, so a program may attach it
//     after the pool was built; the Model holds no state of a
//     conversation, so one instance serves any number of sessions.
//   - Cancelling the turn's context ends the wait: an Asker returns the
//     context's error, which is the turn's.
//   - An answer is bounded (MaxAnswerBytes); a longer one is an error,
//     never a cut answer.
package human
