// A check file with a syntax error on line 4.
module.exports = (output) => {
  const words = output.split(' ');
  return words.length > ;
};
