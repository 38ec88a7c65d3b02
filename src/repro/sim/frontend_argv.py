"""The environment variable that hands the launch argv to repro's scheduler process (SGLang
spawns it; the simulator resolves its timing and acceptance from the same argv)."""

ARGV_ENV = "REPRO_SIM_FRONTEND_ARGV"
