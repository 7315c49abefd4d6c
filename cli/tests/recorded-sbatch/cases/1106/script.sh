#!/bin/bash
#PBS --job_name=longname
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
