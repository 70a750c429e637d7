declare module 'hbs';
