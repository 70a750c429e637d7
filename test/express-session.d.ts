declare module 'express-session';
