export const helpers = [];
