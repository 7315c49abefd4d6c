#!/bin/bash
#PBS --job_n=abbr
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
