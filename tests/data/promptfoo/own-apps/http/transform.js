module.exports = (json, text) => ({ output: text.toUpperCase() });
