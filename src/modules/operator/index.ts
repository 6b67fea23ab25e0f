// The operator module's surface (the operator API, /admin/v1): started by startOperator.
export { startOperator, type Operator, type OperatorModuleDeps } from './start.ts';
