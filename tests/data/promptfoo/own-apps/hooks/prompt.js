// Prompt functions as promptfoo calls them: with {vars, provider, config}.
module.exports = async function ({ vars }) {
  return [
    { role: 'system', content: 'Answer in one line.' },
    { role: 'user', content: `Tell me about ${vars.topic} ({{ topic }} again)` },
  ];
};

module.exports.shout = (context) => `SHOUT ${context.vars.topic.toUpperCase()}`;
