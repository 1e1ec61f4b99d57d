import './config.js';
console.log('stub');
