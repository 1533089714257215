// Checks for semantics.yaml, written as promptfoo's are (CommonJS).
function tooLong(output, context) {
  return output.length > context.config.maximumLength;
}

function startsWithH(output) {
  return output.startsWith('h');
}

function broken(output) {
  const parts = null;
  return parts.length > 0;
}

module.exports = tooLong;
module.exports.startsWithH = startsWithH;
module.exports.broken = broken;
