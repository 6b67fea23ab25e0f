// The operator module's surface (the operator API, /admin/v1): its service and its routes.
export { operatorRoutes } from './routes.ts';
export { OperatorService } from './service.ts';
