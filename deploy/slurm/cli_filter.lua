--[[
Tidal's submit-side filter for Slurm 22.05 (cli_filter/lua): copies a job's --signal into its
Comment, where tidal-slurm reads it.

Why: Tidal gives a job that checkpoints notice before it requeues it (a drain, an unhealthy node,
...): it sends the job's own --signal=[B:]SIG@TIME, waits up to TIME seconds for the job to report
its checkpoint, then requeues it. Slurm 22.05 shows a job's --signal to no other program (not in
`scontrol show job`, `squeue --json`, libslurm's job_info_t, nor the job_submit plugin's job_desc),
so the only place it can be read is the submitting command. This filter runs in sbatch / salloc /
srun and appends the word "tidal.dev/signal=<the --signal value>" to the job's --comment (unless the
comment already names tidal.dev/signal: the user's own word wins). Without it, a job declares the
same by hand: --comment="tidal.dev/signal=B:USR1@60".

Install: CliFilterPlugins=lua in slurm.conf, this file as cli_filter.lua in the SAME directory as
slurm.conf, on every host users submit from (it runs in the client, not in slurmctld).

Everything else about the job is left as submitted. A job that rewrites its comment later (to
report a checkpoint: `scontrol update jobid=$SLURM_JOB_ID comment=tidal.dev/last-checkpoint=...`)
should keep the word; tidal-slurm remembers it while it runs (docs/slurm.md).
]]

local KEY = "tidal.dev/signal="

function slurm_cli_setup_defaults(options, early_pass)
	return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, pack_offset)
	local sig = options["signal"]
	-- no --signal: 22.05 reports "0@0" (or nothing)
	if sig == nil or sig == "" or sig == "0@0" or string.sub(sig, 1, 2) == "0@" then
		return slurm.SUCCESS
	end
	local comment = options["comment"]
	if comment == nil then
		comment = ""
	end
	if string.find(comment, KEY, 1, true) ~= nil then
		return slurm.SUCCESS
	end
	if comment ~= "" then
		comment = comment .. " "
	end
	options["comment"] = comment .. KEY .. sig
	return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, jobid, stepid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
