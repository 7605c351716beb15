// gl-text's typedarray-pool asks Node's `buffer` only to tell Buffers from typed arrays; a browser page has no
// Buffers, and nothing we bundle allocates one through it.
export const Buffer = {
  isBuffer() {
    return false;
  },
};
