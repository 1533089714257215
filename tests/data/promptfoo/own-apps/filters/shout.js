// A Nunjucks filter as promptfoo loads one: the file's export, called with the value and
// the filter's arguments.
module.exports = (value, mark) => String(value).toUpperCase() + (mark === undefined ? '!' : mark);
