package servertest

// ModelChoiceManifest is a pool for the tests of a front end's model
// choice (OpenCode's /models, ACP's session/set_model): lead answers itself
// on its own model (steady); planner's model (planner) delegates to
// helper, whose own model (quick) is priced; crew is a team.
const ModelChoiceManifest = `
default_agent: lead
agents:
  lead:
    model: {type: scripted, model: steady, turns: ["lead answers itself"]}
    tools: [subagent]
  planner:
    model:
      type: scripted
      model: planner
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, description: Ask the helper, prompt: Help}}]
        - "planned with help"
    tools: [subagent]
  helper:
    model: {type: test, model: quick, call_tools: [], custom_output_text: "helped", input_price: 3, output_price: 15}
teams:
  crew:
    mode: parallel
    members: [helper]
`
