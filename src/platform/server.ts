// The Fastify instance the service runs on, with the options every answer depends on: the envelope for the
// router's and Node's own errors, time limits, proxies, request ids and the logger.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.ts';
import { installClientKey, trustProxyOption } from './client-ip.ts';
import type { ApiInstance } from './fastify.ts';
import { ROUTER_MAX_PARAM_LENGTH, answerClientError, answerFrameworkError, escapeMalformedPath, genReqId } from './http.ts';
import { loggerOptions } from './logger.ts';

/** The service's logger (main.ts), or options for one (tests: a stream to read); false silences it (tests). */
export type LoggerSetting = boolean | Record<string, unknown> | FastifyBaseLogger;

function isLogger(value: LoggerSetting | undefined): value is FastifyBaseLogger {
  return typeof value === 'object' && typeof (value as { child?: unknown }).child === 'function';
}

export function createServer(config: Config, logger: LoggerSetting | undefined): ApiInstance {
  const app = Fastify({
    ...(isLogger(logger)
      ? { loggerInstance: logger }
      : { logger: logger === false ? false : { ...loggerOptions(config.logLevel), ...(typeof logger === 'object' ? logger : {}) } }),
    // Called on requests only, once `app` exists.
    trustProxy: trustProxyOption(config.trustProxy, (message) => app.log.warn(message)),
    genReqId,
    bodyLimit: 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: ROUTER_MAX_PARAM_LENGTH },
    // Every answer in the envelope with Cache-Control, also those the router and Node's parser give.
    rewriteUrl: escapeMalformedPath,
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError, // Fastify calls it with `this` bound to the instance
    return503OnClosing: false, // installHttpPlumbing answers them in the envelope
    requestTimeout: config.requestTimeoutSeconds * 1000,
    http: {
      requireHostHeader: false, // installHttpPlumbing refuses a missing Host in the envelope
      // Node looks for requests past their time every connectionsCheckingInterval (30 s by default, which
      // would let a socket outlive a short time-out by that much); headers may not take longer than all.
      headersTimeout: Math.min(60_000, config.requestTimeoutSeconds * 1000),
      connectionsCheckingInterval: Math.min(5000, (config.requestTimeoutSeconds * 1000) / 2),
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  installClientKey(app);
  return app;
}
