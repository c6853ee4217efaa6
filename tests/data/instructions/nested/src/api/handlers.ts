export const handlers = [];
