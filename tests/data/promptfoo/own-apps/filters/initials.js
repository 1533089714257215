module.exports = function (names) {
  return names.split(',').map((n) => n.trim()[0]).join('.');
};
