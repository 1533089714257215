// A test generator in JavaScript, as promptfoo calls one: its export returns the tests.
module.exports = async function () {
  return ['bees', 'crows'].map((topic) => ({
    vars: { topic },
    assert: [{ type: 'icontains', value: topic }],
  }));
};
