#!/bin/bash
#PBS -l nice=7
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
