"""Adapters: environments of other libraries (OpenEnv, textarena, verifiers, ...) served as meshrl
environments by this service, one package each; the run config's environment block names one."""
