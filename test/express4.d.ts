// express4 is Express 4 installed under an alias, to prove the profiler works on both majors.
declare module 'express4' {
  import express from 'express';
  export default express;
}
